# Training Run: the live training-run explainer, served on port 8000.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1

WORKDIR /src
COPY pyproject.toml README.md ./
COPY app ./app
COPY static ./static
COPY scenes ./scenes
RUN pip install .

RUN useradd --create-home --uid 10001 trainer
USER trainer
WORKDIR /home/trainer

EXPOSE 8000
CMD ["trainingrun", "--host", "0.0.0.0"]

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
# Healthy while the server answers and its training worker is alive ("ok": true). The slim
# image has no curl, so Python asks; TRAININGRUN_PORT moves the server, and the check with it.
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
  CMD ["python", "-c", "import json, os, sys, urllib.request; port = os.environ.get('TRAININGRUN_PORT', '8000'); health = json.load(urllib.request.urlopen(f'http://127.0.0.1:{port}/api/health', timeout=4)); sys.exit(0 if health.get('ok') is True else 1)"]
CMD ["trainingrun", "--host", "0.0.0.0"]

"""The training run: data lake -> loaders -> GPUs -> ring all-reduce -> update -> checkpoint.

PUBLIC API (the server and the CLI rely on exactly this):

    trainer = Trainer(config: RunConfig, run_dir: str | Path, *, fresh: bool = False,
                      log: Callable[[str], None] | None = None)
        Opens (or creates) the run directory: data lake, checkpoints. Resumes from the
        latest good checkpoint unless fresh=True (which deletes old checkpoints). Corrupt
        checkpoints are skipped with an event. Starts the loader threads.
    trainer.config            RunConfig
    trainer.step              int, steps completed on the current timeline
    trainer.topology          cluster.Topology (use .to_dict() for the wire)
    trainer.vocab             list[str]
    trainer.n_params          int, parameters per replica
    trainer.startup_events    list[Event] raised while opening (checkpoint_skipped, restored)
    trainer.restarts          int, rollbacks after failures so far (this process)
    trainer.train_step() -> StepReport
        One full step. May carry events (checkpoint_saved, epoch_started; gpu_failed,
        restored and gpu_replaced when a failure was scheduled for this step).
    trainer.fail_gpu(gpu: int) -> list[Event]
        Fails a GPU now: [gpu_failed, restored, gpu_replaced]. The run is rolled back to
        the last good checkpoint (step 0 if none) and continues from there on the next
        train_step(). Raises ValueError for an out-of-range gpu.
    trainer.schedule_failure(step: int, gpu: int)   fail `gpu` when `step` is attempted
    trainer.checkpoint_now() -> Event               checkpoint_saved (reason "on_demand")
    trainer.checkpoints() -> list[dict]             [{step, path, bytes, created, ok}], newest last
    trainer.probe() -> Probe                        top-5 after "Once upon a" + 16 weights
    trainer.params_sha256() -> str                  over GPU 0's parameters, fixed order
    trainer.close(final_checkpoint: bool = True)    stops loaders; saves a checkpoint if the
                                                    current step has none yet

Calls are not thread-safe: one thread drives a Trainer.
"""

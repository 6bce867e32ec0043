// One direction's scheduler of the live ref sync (refsync.ts): debounced triggers, one run at a time, and a re-run
// when something changed meanwhile.

export class Lane {
  private timer: ReturnType<typeof setTimeout> | null = null;
  private firstEventAt = 0;
  private running: Promise<void> | null = null;
  private again = false;
  private stopped = false;

  constructor(
    private readonly work: () => Promise<void>,
    private readonly debounceMs: number,
    private readonly maxWaitMs: number,
  ) {}

  /** A file event: (re)arm the debounce timer, never later than maxWait after the first event of a burst. */
  poke(): void {
    if (this.stopped) return;
    const now = Date.now();
    if (this.timer === null) this.firstEventAt = now;
    else clearTimeout(this.timer);
    const delay = Math.max(0, Math.min(this.debounceMs, this.firstEventAt + this.maxWaitMs - now));
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.runNow();
    }, delay);
  }

  /** Runs the work now, or once more right after the run in flight. Resolves when a run that saw this call ended. */
  async runNow(): Promise<void> {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      await this.running;
      // The run we waited for may itself have started the re-run; wait for that one too.
      if (this.running) await this.running;
      return;
    }
    this.running = (async () => {
      try {
        do {
          this.again = false;
          await this.work();
        } while (this.again && !this.stopped);
      } finally {
        this.running = null;
      }
    })();
    await this.running;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    if (this.running) await this.running;
  }
}

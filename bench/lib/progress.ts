// A progress bar on stderr: redrawn in place on a terminal, one line per update otherwise (CI logs).

export interface Progress {
  update(done: number): void;
  finish(): void;
}

const WIDTH = 30;

export function progressBar(
  label: string,
  total: number,
  out: NodeJS.WriteStream = process.stderr,
): Progress {
  const started = performance.now();
  const tty = Boolean(out.isTTY);
  const render = (done: number) => {
    const share = total === 0 ? 1 : done / total;
    const filled = Math.round(share * WIDTH);
    const seconds = (performance.now() - started) / 1000;
    const rate = seconds > 0 ? Math.round(done / seconds) : 0;
    return `${label} [${'#'.repeat(filled)}${'.'.repeat(WIDTH - filled)}] ${(share * 100).toFixed(0).padStart(3)}% ${done.toLocaleString('en')}/${total.toLocaleString('en')} ${seconds.toFixed(1)} s ${rate.toLocaleString('en')}/s`;
  };
  return {
    update(done) {
      out.write(tty ? `\r${render(done)}` : `${render(done)}\n`);
    },
    finish() {
      if (tty) out.write('\n');
    },
  };
}

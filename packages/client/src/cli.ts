// The package's command: `svc-integration-client listen` (run as `npx @svc/integration-client listen`).
import { parseArgs } from 'node:util';
import { listen } from './listen.js';

const USAGE = `Usage: npx @svc/integration-client listen --forward-to URL [options]

Forwards the organization's events, signed like webhook deliveries, to a local receiver.

  --forward-to URL      where to POST them, e.g. http://localhost:3000/webhooks (required)
  --events TYPES        only these types: booking.created, booking.* or * (repeat, or comma-separated)
  --env-file FILE       read SVC_API_KEY and SVC_BASE_URL from FILE (e.g. data/demo.env)
  --api-key KEY         instead of SVC_API_KEY (needs events:read and bookings:read)
  --base-url URL        instead of SVC_BASE_URL (default http://localhost:8080/api/v1)
  --secret whsec_…      sign with this secret instead of a new one (to keep it across runs)
  --interval SECONDS    between two looks at the event log (default 2, at least 0.5)
  --retry-gaps LIST     seconds before each retry of a forward (default 1,2,4,8)`;

function fail(message: string): never {
  console.error(`${message}\n\n${USAGE}`);
  process.exit(2);
}

const seconds = (text: string, flag: string): number => {
  const value = Number(text);
  if (!Number.isFinite(value) || value < 0) fail(`${flag} takes seconds, not ${JSON.stringify(text)}`);
  return Math.round(value * 1000);
};

async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  if (command !== 'listen') fail(command ? `Unknown command ${command}` : 'A command is required');
  let values: Record<string, string | string[] | boolean | undefined>;
  try {
    ({ values } = parseArgs({
      args: rest,
      options: {
        'forward-to': { type: 'string' },
        events: { type: 'string', multiple: true },
        'env-file': { type: 'string' },
        'api-key': { type: 'string' },
        'base-url': { type: 'string' },
        secret: { type: 'string' },
        interval: { type: 'string' },
        'retry-gaps': { type: 'string' },
        help: { type: 'boolean' },
      },
    }));
  } catch (error) {
    fail((error as Error).message);
  }
  if (values.help) {
    console.log(USAGE);
    return;
  }
  if (typeof values['env-file'] === 'string') process.loadEnvFile(values['env-file']);
  const forwardTo = values['forward-to'];
  if (typeof forwardTo !== 'string') fail('--forward-to is required');
  const apiKey = (values['api-key'] as string | undefined) ?? process.env.SVC_API_KEY;
  if (!apiKey) fail('An API key is required: SVC_API_KEY, --env-file or --api-key');
  const secret = values.secret as string | undefined;
  if (secret !== undefined && !secret.startsWith('whsec_')) fail('--secret takes a whsec_ secret');
  const listener = await listen({
    baseUrl:
      (values['base-url'] as string | undefined) ??
      process.env.SVC_BASE_URL ??
      'http://localhost:8080/api/v1',
    apiKey,
    forwardTo,
    events: ((values.events as string[] | undefined) ?? []).flatMap((e) => e.split(',')).filter(Boolean),
    ...(secret ? { secret } : {}),
    ...(typeof values.interval === 'string' ? { intervalMs: seconds(values.interval, '--interval') } : {}),
    ...(typeof values['retry-gaps'] === 'string'
      ? { retryGapsMs: values['retry-gaps'].split(',').map((s) => seconds(s, '--retry-gaps')) }
      : {}),
  });
  console.log('Listening; Ctrl-C stops.');
  let stops = 0;
  const stop = () => {
    stops += 1;
    // A second Ctrl-C does not wait for a forward in flight.
    if (stops > 1) process.exit(130);
    void listener.stop();
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  const summary = await listener.done;
  console.log(`stopped: ${summary.forwarded} forwarded, ${summary.failed} failed`);
  process.off('SIGINT', stop);
  process.off('SIGTERM', stop);
}

main(process.argv.slice(2)).catch((error: unknown) => {
  console.error(`listen: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});

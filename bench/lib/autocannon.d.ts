// autocannon ships no types; bench/run.ts reads duration, requests.total, latency.p99, non2xx, errors
// and timeouts of its result.
declare module 'autocannon';

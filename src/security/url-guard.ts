export * from '../delivery/url-guard.js';

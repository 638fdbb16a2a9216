// One "## " section of BENCHMARKS.md replaced (or appended) by the run that measures it, the rest of
// the file (written by hand) kept as it is.

/** `markdown` with the section under `heading` (up to the next "## ") replaced by `section`, or appended. */
export function withMarkdownSection(markdown: string, heading: string, section: string): string {
  const escaped = heading.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const start = markdown.search(new RegExp(`^${escaped}\\s*$`, 'm'));
  if (start < 0) return `${markdown.replace(/\s*$/, '')}\n\n${section.trim()}\n`;
  const rest = markdown.slice(start + heading.length);
  const next = rest.search(/^## /m);
  const after = next < 0 ? '' : rest.slice(next);
  return `${markdown.slice(0, start)}${section.trim()}\n${after ? `\n${after}` : ''}`;
}

// One "## " section of BENCHMARKS.md replaced (or appended) by the run that measures it, the rest
// of the file kept as it is: the soak and the kill burst each own a section.

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

/** The section under `heading` (up to the next "## "), or null. */
export function markdownSection(markdown: string, heading: string): string | null {
  const escaped = heading.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const start = markdown.search(new RegExp(`^${escaped}\\s*$`, 'm'));
  if (start < 0) return null;
  const rest = markdown.slice(start + heading.length);
  const next = rest.search(/^## /m);
  return markdown.slice(start, next < 0 ? undefined : start + heading.length + next).trim();
}

/** Sections of BENCHMARKS.md written by their own commands, which a rewrite of the file keeps. */
export const OWN_SECTIONS = ['## Soak', '## Kill burst'];

/** `markdown` with every section of OWN_SECTIONS that `previous` had, carried over. */
export function keepOwnSections(previous: string, markdown: string): string {
  let out = markdown;
  for (const heading of OWN_SECTIONS) {
    const section = markdownSection(previous, heading);
    if (section) out = withMarkdownSection(out, heading, section);
  }
  return out;
}

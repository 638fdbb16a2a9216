// The commands of the README's "Production" section and of docs/operations.md are fenced blocks
// marked with a tag and a name (```sh runbook backup): .ci/container runs each one by name, and
// checks that it ran them all, so the documents cannot drift from what works.
//
//   node .ci/container.d/blocks.mjs FILE TAG NAME   the block's shell code
//   node .ci/container.d/blocks.mjs FILE TAG        the names of the file's TAG blocks, one a line
import { readFileSync } from 'node:fs';

const [file, tag, name] = process.argv.slice(2);
if (!file || !tag) {
  console.error('usage: blocks.mjs FILE TAG [NAME]');
  process.exit(2);
}
const blocks = [...readFileSync(file, 'utf8').matchAll(/^( *)```sh ([\w-]+) ([\w-]+)\n([\s\S]*?)^\1```/gm)]
  .filter((m) => m[2] === tag)
  .map((m) => ({ name: m[3], code: m[4].replace(new RegExp(`^${m[1]}`, 'gm'), '') }));
if (name === undefined) {
  for (const block of blocks) console.log(block.name);
} else {
  const found = blocks.filter((b) => b.name === name);
  if (found.length !== 1) {
    console.error(`${file}: ${found.length} blocks \`\`\`sh ${tag} ${name}, expected 1`);
    process.exit(1);
  }
  process.stdout.write(found[0].code);
}

// Writes docs/cli-reference.md from the command definitions (run after `npm run build`; the npm
// script `docs:cli` does both). test/cli/cli-reference.test.ts checks the file is up to date.
import { writeFileSync } from 'node:fs';

const { buildProgram } = await import('../dist/src/surfaces/cli/main.js');
const { renderCliReference } = await import('../dist/src/surfaces/cli/reference.js');
const target = new URL('../docs/cli-reference.md', import.meta.url);
writeFileSync(target, renderCliReference(await buildProgram()));
process.stdout.write(`wrote ${target.pathname}\n`);

// docs/cli-reference.md, rendered from the command definitions themselves (the same commander tree
// `sluice --help` shows), so the reference cannot drift from the CLI: scripts/cli-reference.mjs
// writes it, test/cli/cli-reference.test.ts fails when the file is not what this renders.
import type { Command, Option } from 'commander';
import { allCommands, EXAMPLES } from './help.js';

function pathOf(command: Command): string {
  const words: string[] = [];
  for (let c: Command | null = command; c?.parent; c = c.parent) words.unshift(c.name());
  return words.join(' ');
}

/** Markdown table cells hold one line; a pipe would end the cell. */
const cell = (text: string) => text.replace(/\|/g, '\\|').replace(/\s*\n\s*/g, ' ');

function optionRow(option: Option): string {
  const fallback =
    option.defaultValue !== undefined && !option.negate && option.defaultValue !== false
      ? ` (default: ${JSON.stringify(option.defaultValue)})`
      : '';
  return `| \`${option.flags}\` | ${cell(option.description)}${cell(fallback)} |`;
}

function isHidden(command: Command): boolean {
  return (command as unknown as { _hidden?: boolean })._hidden === true;
}

function section(command: Command): string {
  const path = pathOf(command);
  const lines = [
    `### sluice ${path}`,
    '',
    cell(command.description()),
    '',
    '```',
    `sluice ${path} ${command.usage()}`,
    '```',
  ];
  const args = command.registeredArguments;
  if (args.length > 0) {
    lines.push('', '| Argument | |', '|---|---|');
    for (const arg of args)
      lines.push(`| \`${arg.name()}\`${arg.required ? '' : ' (optional)'} | ${cell(arg.description)} |`);
  }
  const options = command.options.filter((o) => !o.hidden);
  if (options.length > 0) {
    lines.push('', '| Option | |', '|---|---|');
    for (const option of options) lines.push(optionRow(option));
  }
  const subs = command.commands.filter((c) => !isHidden(c));
  if (subs.length > 0) lines.push('', `Subcommands: ${subs.map((c) => `\`${c.name()}\``).join(', ')}.`);
  const examples = command.parent?.parent ? [] : (EXAMPLES[command.name()] ?? []);
  if (examples.length > 0) lines.push('', 'Examples:', '', '```', ...examples.map((e) => `$ ${e}`), '```');
  return lines.join('\n');
}

/** The whole reference: global options once, then every visible command in `sluice --help` order. */
export function renderCliReference(program: Command): string {
  const globals = program.options.map(optionRow);
  const visible = allCommands(program).filter((c) => {
    for (let at: Command | null = c; at?.parent; at = at.parent) if (isHidden(at)) return false;
    return true;
  });
  return [
    '# Sluice command reference',
    '',
    '<!-- Generated from the command definitions by `npm run docs:cli` (scripts/cli-reference.mjs);',
    '     test/cli/cli-reference.test.ts fails when it is out of date. Do not edit by hand. -->',
    '',
    'Every command also answers `--help` (or `sluice help COMMAND …`). Exit codes: 0 ok, 1 bad input,',
    '2 not found or denied; an error is one line `sluice: CODE: …` on stderr.',
    '',
    '## Global options',
    '',
    'They go before or after the command word: `sluice --as helper message ls` = `sluice message ls --as helper`.',
    '',
    '| Option | |',
    '|---|---|',
    ...globals,
    '',
    '## Commands',
    '',
    ...visible.map((c) => `${section(c)}\n`),
  ].join('\n');
}

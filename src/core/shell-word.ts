// Quoting for commands a person or a model pastes into a POSIX shell (hook commands run through
// `sh -c`; bounded reads name the command that continues them).

/** Characters no POSIX shell treats specially anywhere in a word (`#` starts a comment, `~` expands). */
const SHELL_PLAIN = /^[A-Za-z0-9_/.,:=@%+-]+$/;

/** One word for a POSIX shell: left bare when it is safe, else single-quoted. */
export function shellWord(word: string): string {
  return SHELL_PLAIN.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;
}

/** One measured ratio: every benchmark module returns a list of these. */
export interface BenchResult {
  name: string;
  ratio: number;
  /** The target as text, e.g. `<= 2` or `>= 0.3`. */
  target: string;
  ok: boolean;
  detail: string;
}

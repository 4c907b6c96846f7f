/** One question of a Codex user-input request, as the client sent it (the parts shown). */
interface Question {
  id?: unknown;
  header?: unknown;
  question?: unknown;
  options?: unknown;
}

function questionsOf(value: unknown): Question[] {
  return Array.isArray(value) ? (value.filter((q) => typeof q === 'object' && q !== null) as Question[]) : [];
}

function optionsOf(q: Question): { label: string; description: string }[] {
  if (!Array.isArray(q.options)) return [];
  return (q.options as { label?: unknown; description?: unknown }[]).map((o) => ({
    label: String(o?.label ?? ''),
    description: String(o?.description ?? ''),
  }));
}

/**
 * The model's questions exactly as the client sent them: each one's header, its text and the
 * options it offered (docs/approvals.md). Pressing an option puts its label in the answer.
 */
export function ApprovalQuestions({
  questions,
  onPick,
}: {
  questions: unknown;
  onPick: (label: string) => void;
}) {
  return (
    <ol class="approval-questions">
      {questionsOf(questions).map((q) => (
        <li key={String(q.id)}>
          {typeof q.header === 'string' && q.header !== '' && <strong>{q.header}: </strong>}
          <span class="approval-question">{String(q.question ?? '')}</span>
          {optionsOf(q).length > 0 && (
            <ul class="approval-options">
              {optionsOf(q).map((o) => (
                <li key={o.label}>
                  <button type="button" class="button ghost" onClick={() => onPick(o.label)}>
                    {o.label}
                  </button>{' '}
                  <span class="muted small">{o.description}</span>
                </li>
              ))}
            </ul>
          )}
        </li>
      ))}
    </ol>
  );
}

/**
 * The answer field of a question card: the text goes back to the model as the answer to every
 * question asked (`approval.decide` allow with the text as its note). Deny sends none.
 */
export function AnswerForm({
  answer,
  setAnswer,
  busy,
  onAnswer,
  onDeny,
  onDenyWithNote,
}: {
  answer: string;
  setAnswer: (text: string) => void;
  busy: boolean;
  onAnswer: (text: string) => void;
  onDeny: () => void;
  onDenyWithNote: () => void;
}) {
  return (
    <form
      class="approval-note"
      onSubmit={(e) => {
        e.preventDefault();
        onAnswer(answer);
      }}
    >
      <label>
        Your answer
        <textarea value={answer} maxLength={2000} onInput={(e) => setAnswer(e.currentTarget.value)} />
      </label>
      <div class="banner-actions">
        <button type="submit" class="button primary" disabled={busy || answer.trim() === ''}>
          Send answer
        </button>
        <button type="button" class="button" disabled={busy} onClick={onDeny}>
          Deny
        </button>
        <button type="button" class="button" disabled={busy} onClick={onDenyWithNote}>
          Deny with a note…
        </button>
      </div>
    </form>
  );
}

import { useState } from 'preact/hooks';

/** Puts text on the clipboard; false when the browser refuses (then the person selects it). */
async function copyText(text: string): Promise<boolean> {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    return false;
  }
}

/** One shell command, shown whole (selectable) with a Copy button. */
export function CopyLine({ command, label }: { command: string; label: string }) {
  const [copied, setCopied] = useState<'yes' | 'no' | null>(null);
  return (
    <div class="copy-line">
      <code class="copy-text" data-testid="command">
        {command}
      </code>
      <button
        type="button"
        class="button ghost copy-button"
        aria-label={`Copy: ${label}`}
        onClick={() => void copyText(command).then((ok) => setCopied(ok ? 'yes' : 'no'))}
      >
        {copied === 'yes' ? 'Copied' : 'Copy'}
      </button>
      <span class="visually-hidden" role="status">
        {copied === 'yes'
          ? 'copied'
          : copied === 'no'
            ? 'the browser did not allow copying: select the text'
            : ''}
      </span>
    </div>
  );
}

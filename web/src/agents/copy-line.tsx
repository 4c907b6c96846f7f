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

/**
 * One shell command, shown whole (selectable) with a Copy button whose label says which command
 * ("Copy the run command"); the button's text says when it was copied. No live region: the page's
 * one `status` role is the connection line.
 */
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
        aria-label={`Copy the ${label}`}
        title={copied === 'no' ? 'the browser did not allow copying: select the text' : undefined}
        onClick={() => void copyText(command).then((ok) => setCopied(ok ? 'yes' : 'no'))}
      >
        {copied === 'yes' ? 'Copied' : copied === 'no' ? 'Select it' : 'Copy'}
      </button>
    </div>
  );
}

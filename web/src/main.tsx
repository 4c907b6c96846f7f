import { render } from 'preact';
import { App } from './app.js';
import { pageDrafts } from './channels/drafts.js';
import { RpcClient, type SocketLike } from './rpc.js';
import { checkSession, rpcSocketUrl } from './session.js';
import './style.css';

async function boot(root: HTMLElement): Promise<void> {
  const session = await checkSession();
  if (session.kind === 'login') {
    render(<SignedOut />, root);
    return;
  }
  if (session.kind === 'error') {
    render(<Unreachable message={session.message} />, root);
    return;
  }
  // Before any composer reads a draft: another person's, left in this tab, must not show.
  pageDrafts.signIn(session.hello.principal.id);
  const client = new RpcClient({
    url: rpcSocketUrl(window.location),
    connect: (url) => new WebSocket(url) as unknown as SocketLike,
  });
  client.start();
  render(<App client={client} hello={session.hello} />, root);
}

function SignedOut() {
  return (
    <main class="notice">
      <h1>Sluice</h1>
      <p>
        You are not signed in. Open the login link that <code>sluice serve</code> printed when it started (it
        looks like <code>http://127.0.0.1:7777/login?code=…</code> and works once, for 10 minutes); run{' '}
        <code>sluice login-link</code> for a fresh one.
      </p>
    </main>
  );
}

function Unreachable({ message }: { message: string }) {
  return (
    <main class="notice">
      <h1>Sluice</h1>
      <p role="alert">{message}</p>
      <button type="button" class="button" onClick={() => window.location.reload()}>
        Try again
      </button>
    </main>
  );
}

const root = document.getElementById('app');
if (root) void boot(root);

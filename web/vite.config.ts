import { fileURLToPath } from 'node:url';
import preact from '@preact/preset-vite';
import { defineConfig } from 'vite';

// Built once into web/dist and served by `sluice serve` at `/`; the page talks to the same origin.
export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/',
  plugins: [preact({ prerender: { enabled: false } })],
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    sourcemap: false,
  },
  server: {
    // `vite --config web/vite.config.ts` during development: forward the host's routes to a running `sluice serve`.
    proxy: {
      '/rpc': { target: 'http://127.0.0.1:7777', ws: true },
      '/media': 'http://127.0.0.1:7777',
      '/login': 'http://127.0.0.1:7777',
      '/logout': 'http://127.0.0.1:7777',
    },
  },
});

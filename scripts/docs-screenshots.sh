#!/usr/bin/env bash
# Copies the browser tests' screenshots of each screen into docs/images/web (docs/web.md shows
# them), shrunk with pngquant (256-colour palette; UI shots lose nothing visible). Run after
#   SLUICE_SCREENSHOTS=1 npx vitest run test/web/start-and-read.e2e.test.ts test/web/members-and-queue.e2e.test.ts test/web/browser.e2e.test.ts
set -euo pipefail
cd "$(dirname "$0")/.."
[ -d test-artifacts/web ] || { echo "no screenshots: run the browser tests with SLUICE_SCREENSHOTS=1 first" >&2; exit 1; }
command -v pngquant >/dev/null || { echo "needs pngquant (apt-get install pngquant)" >&2; exit 1; }
SCREENS=(21a-signed-out 21-sign-in 11-no-channels 16-markdown 17-show-more 3-timeline-with-image
  12-new-message 24-new-agent 14-new-channel 22-members 23-members-refused 15-leave-confirm
  25-queue-marks 26-returned-reason 19-returned-cards 18-queue-denied 27-queue-unknown 28-channel-not-yours)
mkdir -p docs/images/web
for screen in "${SCREENS[@]}"; do
  for view in desktop phone; do
    pngquant --force --strip --quality 60-90 --speed 1 --output "docs/images/web/$view-$screen.png" \
      "test-artifacts/web/$view-$screen.png"
  done
done
du -sh docs/images/web

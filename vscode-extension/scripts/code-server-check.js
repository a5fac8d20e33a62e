// The extension in a real VS Code: code-server 4 in headless Chromium, driven
// by playwright-core. Not part of `npm test` (it needs what CI does not have);
// run by hand after `npm run package`:
//
//   node scripts/code-server-check.js [qflow-0.1.0.vsix]
//
// It installs the package into a fresh code-server profile, opens a copy of
// samples/ (with order.bpmn20.xml and scenarios/order.json added) and checks,
// as a user would see them: the Problems panel lists qflow's diagnostics and
// a code's link opens its page; Reopen Editor With… offers qflow Diagram and
// it draws the model; Show Instance on Diagram is on that editor's title bar
// and draws a FAILED instance there; a click on an element selects its id in
// a text editor; order.bpmn20.xml is a BPMN model. Screenshots go to
// $QFLOW_SHOTS (default: a temporary folder, printed). Exit 1 when a check
// fails.
//
// What it needs, each found where the environment says, else at a default:
// code-server ($CODE_SERVER, default /tmp/cs/node_modules/.bin/code-server),
// playwright-core ($PLAYWRIGHT_CORE, default /tmp/pw/node_modules/playwright-core),
// Chromium ($CHROMIUM, default /usr/bin/chromium), the qflow binary
// ($QFLOW_BIN, default ../target/debug/qflow). Any of them missing: it says
// which and exits 0 (skipped), so it never fails where it cannot run.

'use strict';

const { execFileSync, spawn } = require('node:child_process');
const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');

const EXTENSION = path.resolve(__dirname, '..');
const REPO = path.dirname(EXTENSION);
const manifest = JSON.parse(fs.readFileSync(path.join(EXTENSION, 'package.json'), 'utf8'));
const needs = {
  'code-server': process.env.CODE_SERVER || '/tmp/cs/node_modules/.bin/code-server',
  'playwright-core': process.env.PLAYWRIGHT_CORE || '/tmp/pw/node_modules/playwright-core',
  Chromium: process.env.CHROMIUM || '/usr/bin/chromium',
  qflow: process.env.QFLOW_BIN || path.join(REPO, 'target', 'debug', 'qflow'),
  'the package': process.argv[2] || path.join(EXTENSION, `${manifest.name}-${manifest.version}.vsix`),
};
const missing = Object.entries(needs).filter(([, p]) => !fs.existsSync(p));
if (missing.length > 0) {
  console.log(`code-server check skipped: no ${missing.map(([what, p]) => `${what} (${p})`).join(', ')}`);
  process.exit(0);
}
const { chromium } = require(needs['playwright-core']);

const failures = [];
function check(ok, what, seen) {
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}${seen === undefined ? '' : `: ${typeof seen === 'string' ? seen : JSON.stringify(seen)}`}`);
  if (!ok) failures.push(what);
}

function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

async function main() {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'qflow-code-server-'));
  const shots = process.env.QFLOW_SHOTS || path.join(work, 'shots');
  fs.mkdirSync(shots, { recursive: true });
  const folder = path.join(work, 'samples');
  fs.cpSync(path.join(REPO, 'samples'), folder, { recursive: true });
  fs.copyFileSync(path.join(folder, 'dbg08-long-outage.bpmn'), path.join(folder, 'order.bpmn20.xml'));
  fs.copyFileSync(path.join(folder, 'scenarios', 'dbg08-long-outage.json'), path.join(folder, 'scenarios', 'order.json'));
  const db = path.join(work, 'run.db');
  execFileSync(needs.qflow, ['run', path.join(folder, 'dbg08-long-outage.bpmn'), '--db', db], { stdio: 'ignore' });
  const userData = path.join(work, 'user');
  const extensions = path.join(work, 'extensions');
  fs.mkdirSync(path.join(userData, 'User'), { recursive: true });
  fs.writeFileSync(
    path.join(userData, 'User', 'settings.json'),
    JSON.stringify({
      'security.workspace.trust.enabled': false,
      'workbench.startupEditor': 'none',
      'telemetry.telemetryLevel': 'off',
      'extensions.autoCheckUpdates': false,
      'update.mode': 'none',
      'qflow.path': path.resolve(needs.qflow),
      'qflow.database': db,
    }),
  );
  execFileSync(needs['code-server'], ['--install-extension', path.resolve(needs['the package']), '--extensions-dir', extensions, '--user-data-dir', userData], {
    stdio: 'ignore',
  });
  const port = await freePort();
  const server = spawn(
    needs['code-server'],
    ['--bind-addr', `127.0.0.1:${port}`, '--auth', 'none', '--disable-telemetry', '--disable-update-check', '--extensions-dir', extensions, '--user-data-dir', userData, folder],
    // Its own process group, so that stopping it stops its helpers too (a
    // file watcher outlives a SIGTERM to code-server alone).
    { stdio: 'ignore', detached: true },
  );
  const browser = await chromium.launch({ executablePath: needs.Chromium, headless: true, args: ['--no-sandbox'] });
  try {
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    const wait = (ms) => page.waitForTimeout(ms);
    const shot = (name) => page.screenshot({ path: path.join(shots, `${name}.png`) });
    const rows = (selector) => page.$$eval(selector, (rs) => rs.map((r) => r.innerText.replace(/\s+/g, ' ').trim()));
    async function quickInput(keys, text) {
      await page.keyboard.press(keys);
      await page.waitForSelector('.quick-input-widget:not([style*="display: none"]) input');
      await page.keyboard.type(text, { delay: 10 });
      await wait(1000);
    }
    async function pick(startsWith) {
      for (const r of await page.$$('.quick-input-list .monaco-list-row')) {
        if ((await r.innerText()).replace(/\s+/g, ' ').trim().startsWith(startsWith)) {
          await r.click();
          await wait(1500);
          return true;
        }
      }
      await page.keyboard.press('Escape');
      return false;
    }
    async function openFile(name) {
      await quickInput('Control+P', name);
      await page.keyboard.press('Enter');
      await wait(4000);
    }
    async function diagramFrame() {
      for (let i = 0; i < 20; i++) {
        for (const f of page.frames()) {
          if (await f.$('svg.qflow-diagram').catch(() => null)) return f;
        }
        await wait(500);
      }
      return undefined;
    }
    // code-server takes a moment to listen.
    for (let i = 0; ; i++) {
      try {
        await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(folder)}`);
        break;
      } catch (e) {
        if (i > 30) throw e;
        await wait(500);
      }
    }
    await page.waitForSelector('.monaco-workbench', { timeout: 60000 });
    await wait(5000);

    await openFile('QF020-channel-no-timeout.bpmn');
    await page.keyboard.press('Control+Shift+M');
    await wait(1500);
    const problems = await rows('.markers-panel .monaco-list-row');
    check(problems.some((p) => /has no timeout.*qflow\s*\(?QF020/.test(p)), 'the Problems panel lists QF020 from qflow', problems.slice(0, 3));
    const link = await page.$('.markers-panel .monaco-list-row .code-link, .markers-panel .monaco-list-row a.monaco-link');
    if (link) {
      await link.click();
      await wait(4000);
    }
    const tabs = await rows('.tabs-container .tab');
    check(tabs.includes('Preview QF020.md'), "the code's link opens its page", tabs);
    await shot('problems-and-page');

    await openFile('run-boundaries.bpmn');
    await quickInput('F1', 'Reopen Editor With');
    const reopened = (await pick('View: Reopen Editor With...')) && (await pick('qflow Diagram'));
    await wait(3000);
    const frame = reopened && (await diagramFrame());
    check(!!frame, 'Reopen Editor With… offers qflow Diagram, which draws the model');
    if (frame) {
      const status = await frame.$eval('.status', (e) => e.textContent);
      check(/^process pay · \d+ findings marked/.test(status), 'the diagram says what it marks', status);
    }
    const actions = await page.$$eval('.editor-actions .action-label', (as) => as.map((a) => a.getAttribute('aria-label') || ''));
    check(actions.includes('Show Instance on Diagram'), "Show Instance on Diagram is on the diagram editor's title bar", actions);
    await shot('diagram-editor');

    const button = await page.$('.editor-actions .action-label[aria-label="Show Instance on Diagram"]');
    if (button) {
      await button.click();
      await wait(3000);
      // The database holds only dbg08's instance: none of process pay to pick.
      const toasts = await rows('.notifications-toasts .notification-list-item');
      check(toasts.some((t) => t.includes('the database holds no instance of pay')), 'no instance of run-boundaries to pick, and said so', toasts);
    }
    await openFile('dbg08-long-outage.bpmn');
    await quickInput('F1', 'Reopen Editor With');
    if ((await pick('View: Reopen Editor With...')) && (await pick('qflow Diagram'))) {
      await wait(3000);
      await page.click('.editor-actions .action-label[aria-label="Show Instance on Diagram"]');
      await wait(3000);
      const offered = await rows('.quick-input-list .monaco-list-row');
      check(offered.some((o) => /^dbg08-1\s*FAILED at charge PROVIDER_DOWN/.test(o)), 'the pick offers the FAILED instance', offered);
      await page.keyboard.press('Enter');
      await wait(4000);
      const f = await diagramFrame();
      check(!!(f && (await f.$('[data-instance="dbg08-1"]'))), 'the instance is drawn in the diagram editor');
      await shot('instance-on-editor');
      if (f) {
        await f.click('[data-id="charge"]');
        await wait(3000);
        const cursor = await rows('.statusbar-item');
        check(cursor.some((c) => /^Ln 14, Col \d+ \(6 selected\)$/.test(c)), "a click selects the element's id in a text editor", cursor.filter((c) => /^Ln /.test(c)));
        await shot('click-revealed');
      }
    } else {
      check(false, 'qflow Diagram opens dbg08-long-outage.bpmn');
    }

    await openFile('order.bpmn20.xml');
    const bar = await rows('.statusbar-item');
    check(bar.includes('BPMN 2.0'), 'order.bpmn20.xml is a BPMN 2.0 model', bar);
  } finally {
    await browser.close();
    process.kill(-server.pid, 'SIGTERM');
  }
  console.log(`screenshots in ${shots}`);
  if (failures.length > 0) {
    console.log(`${failures.length} check(s) failed`);
    process.exit(1);
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});

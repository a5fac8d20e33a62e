#!/usr/bin/env node
// Differential test of qflow's modelling rules against the real bpmnlint.
//
// For every model given (files or directories, searched for *.bpmn), lint it
// with bpmnlint (its Linter and NodeResolver, as its command line does) and
// with `qflow check --format json --config RC`, the same configuration file
// for both, and compare the sets of (rule, element id, severity). Prints each
// disagreement and a tally by rule; exits 1 when any model disagrees.
//
//   node scripts/bpmnlint-diff.js [options] MODEL_OR_DIR...
//
// Options:
//   --config FILE     the .bpmnlintrc both tools read (default: one that
//                     extends bpmnlint:recommended, written to a temp dir)
//   --qflow FILE      the qflow binary (default: target/debug/qflow)
//   --bpmnlint DIR    bpmnlint's package directory (default:
//                     $BPMNLINT_DIR or /tmp/bl/node_modules/bpmnlint)
//   --complete-refs   before bpmnlint lints, give every flow node the
//                     <incoming>/<outgoing> references its sequence flows'
//                     targetRef/sourceRef imply (bpmnlint reads only those
//                     children; qflow reads the flows; see docs/conformance.md)
//   --sets-only       compare (rule, element) only, not severities
//   --sarif           also check that --format sarif names the same
//                     (rule, element, level) as --format json
//   --record DIR      write bpmnlint's findings for MODEL as DIR/MODEL.json
//                     (the expectations tests/conformance.rs holds qflow to)
//   --quiet           print disagreeing models and the tally only
//
// Needs Node 18+ and bpmnlint (mkdir -p /tmp/bl && cd /tmp/bl &&
// npm i bpmnlint@11.15.0).
'use strict';

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { createRequire } = require('node:module');
const { execFileSync } = require('node:child_process');

function usage(msg) {
  if (msg) console.error(`error: ${msg}`);
  console.error('usage: node scripts/bpmnlint-diff.js [--config RC] [--qflow BIN] [--bpmnlint DIR] [--complete-refs] [--sets-only] [--sarif] [--record DIR] [--quiet] MODEL_OR_DIR...');
  process.exit(2);
}

function parseArgs(argv) {
  const o = { files: [], completeRefs: false, setsOnly: false, sarif: false, quiet: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const val = () => {
      if (i + 1 >= argv.length) usage(`${a} needs a value`);
      return argv[++i];
    };
    if (a === '--config') o.config = val();
    else if (a === '--qflow') o.qflow = val();
    else if (a === '--bpmnlint') o.bpmnlint = val();
    else if (a === '--record') o.record = val();
    else if (a === '--complete-refs') o.completeRefs = true;
    else if (a === '--sets-only') o.setsOnly = true;
    else if (a === '--sarif') o.sarif = true;
    else if (a === '--quiet') o.quiet = true;
    else if (a === '-h' || a === '--help') usage();
    else if (a.startsWith('--')) usage(`unknown option ${a}`);
    else o.files.push(a);
  }
  if (!o.files.length) usage('no model given');
  return o;
}

function models(paths) {
  const out = [];
  const walk = (p) => {
    const st = fs.statSync(p);
    if (st.isDirectory()) {
      for (const e of fs.readdirSync(p).sort()) walk(path.join(p, e));
    } else if (p.endsWith('.bpmn')) {
      out.push(p);
    }
  };
  for (const p of paths) walk(p);
  return out;
}

const opts = parseArgs(process.argv.slice(2));
const repo = path.resolve(__dirname, '..');
const bpmnlintDir = path.resolve(
  opts.bpmnlint || process.env.BPMNLINT_DIR || '/tmp/bl/node_modules/bpmnlint'
);
if (!fs.existsSync(path.join(bpmnlintDir, 'package.json'))) {
  usage(`bpmnlint not found at ${bpmnlintDir} (mkdir -p /tmp/bl && cd /tmp/bl && npm i bpmnlint@11.15.0, or --bpmnlint DIR)`);
}
const qflow = path.resolve(opts.qflow || path.join(repo, 'target/debug/qflow'));
if (!fs.existsSync(qflow)) usage(`no qflow binary at ${qflow} (cargo build --bin qflow, or --qflow BIN)`);

// Resolve bpmnlint, its rules and bpmn-moddle from where bpmnlint is installed.
const fromModules = createRequire(path.join(path.dirname(bpmnlintDir), 'resolve.js'));
const fromBpmnlint = createRequire(path.join(bpmnlintDir, 'package.json'));
const Linter = fromBpmnlint('./lib/linter');
const NodeResolver = fromBpmnlint('./lib/resolver/node-resolver');
const { BpmnModdle } = fromBpmnlint('bpmn-moddle');
const bpmnlintVersion = fromBpmnlint('./package.json').version;

let configPath = opts.config;
if (!configPath) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bpmnlint-diff-'));
  configPath = path.join(dir, '.bpmnlintrc');
  fs.writeFileSync(configPath, '{ "extends": "bpmnlint:recommended" }\n');
}
const config = JSON.parse(fs.readFileSync(configPath, 'utf8'));

const SEVERITY = { error: 'error', warn: 'warning', warning: 'warning', info: 'info', hint: 'hint' };

/** Give flow nodes the incoming/outgoing references their flows imply. */
function completeRefs(root) {
  let added = 0;
  const seen = new Set();
  const visit = (el) => {
    if (!el || typeof el !== 'object' || seen.has(el)) return;
    seen.add(el);
    if (el.$type === 'bpmn:SequenceFlow') {
      const { sourceRef: s, targetRef: t } = el;
      if (s && s.$instanceOf && s.$instanceOf('bpmn:FlowNode')) {
        const out = s.get('outgoing');
        if (!out.includes(el)) { out.push(el); added++; }
      }
      if (t && t.$instanceOf && t.$instanceOf('bpmn:FlowNode')) {
        const inc = t.get('incoming');
        if (!inc.includes(el)) { inc.push(el); added++; }
      }
    }
    for (const key of ['rootElements', 'flowElements']) {
      for (const child of el[key] || []) visit(child);
    }
  };
  visit(root);
  return added;
}

async function bpmnlint(file) {
  const xml = fs.readFileSync(file, 'utf8');
  const moddle = new BpmnModdle();
  let root;
  let warnings = [];
  try {
    ({ rootElement: root, warnings = [] } = await moddle.fromXML(xml));
  } catch (e) {
    return { error: `parse error: ${e.message.split('\n')[0]}`, findings: [], importWarnings: [], added: 0 };
  }
  const added = opts.completeRefs ? completeRefs(root) : 0;
  const linter = new Linter({ config, resolver: new NodeResolver({ require: fromModules }) });
  const results = await linter.lint(root);
  const findings = [];
  for (const [rule, reports] of Object.entries(results)) {
    for (const r of reports) {
      findings.push({ rule: r.name || rule, element: r.id || '', severity: SEVERITY[r.category] || r.category, message: r.message });
    }
  }
  const importWarnings = warnings.map((w) => `${(w.element && w.element.id) || ''}: ${w.message.split('\n')[0]}`);
  return { findings, importWarnings, added };
}

function runQflow(file, format) {
  let stdout;
  try {
    stdout = execFileSync(qflow, ['check', '--format', format, '--config', configPath, file], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
      maxBuffer: 1 << 28,
    });
  } catch (e) {
    // Exit 1 means "errors found"; the report is still on stdout.
    if (e.status === 1 && e.stdout) stdout = e.stdout;
    else throw new Error(`qflow check failed on ${file}: ${e.stderr || e.message}`);
  }
  return JSON.parse(stdout);
}

function qflowFindings(file) {
  const all = runQflow(file, 'json');
  const findings = [];
  const ownCodes = [];
  for (const d of all) {
    if (d.rule) findings.push({ rule: d.rule, element: d.element || '', severity: d.severity, code: d.code, line: d.line });
    else ownCodes.push(`${d.code} ${d.element || ''} ${d.severity}: ${d.message}`);
  }
  return { findings, ownCodes };
}

function sarifFindings(file) {
  const log = runQflow(file, 'sarif');
  const run = log.runs[0];
  const rules = (run.tool.driver.rules || []);
  const LEVEL = { error: 'error', warning: 'warning', note: 'hint' };
  const out = [];
  for (const r of run.results || []) {
    const rule = rules[r.ruleIndex] || {};
    const name = rule.name || (rule.properties && rule.properties.alias) || '';
    const loc = ((r.locations || [])[0] || {}).logicalLocations || [];
    const element = (loc[0] && (loc[0].name || loc[0].fullyQualifiedName)) || '';
    out.push({ code: r.ruleId, rule: name, element, severity: LEVEL[r.level] || r.level });
  }
  return out;
}

const key = (f) => (opts.setsOnly ? `${f.rule} ${f.element}` : `${f.rule} ${f.element} ${f.severity}`);

function multisetDiff(a, b) {
  const count = new Map();
  for (const f of b) count.set(key(f), (count.get(key(f)) || 0) + 1);
  const only = [];
  for (const f of a) {
    const k = key(f);
    const n = count.get(k) || 0;
    if (n > 0) count.set(k, n - 1);
    else only.push(f);
  }
  return only;
}

(async () => {
  const files = models(opts.files);
  const tally = new Map(); // rule -> { bpmnlintOnly, qflowOnly }
  let disagreeing = 0;
  let sarifMismatches = 0;
  for (const file of files) {
    const rel = path.relative(process.cwd(), file);
    const b = await bpmnlint(file);
    const q = qflowFindings(file);
    const bOnly = multisetDiff(b.findings, q.findings);
    const qOnly = multisetDiff(q.findings, b.findings);
    for (const f of bOnly) {
      const t = tally.get(f.rule) || { bpmnlintOnly: 0, qflowOnly: 0 };
      t.bpmnlintOnly++;
      tally.set(f.rule, t);
    }
    for (const f of qOnly) {
      const t = tally.get(f.rule) || { bpmnlintOnly: 0, qflowOnly: 0 };
      t.qflowOnly++;
      tally.set(f.rule, t);
    }
    const agree = !b.error && bOnly.length === 0 && qOnly.length === 0;
    if (!agree) disagreeing++;
    if (!agree || !opts.quiet) {
      console.log(`${agree ? 'agree   ' : 'DISAGREE'} ${rel} (bpmnlint ${b.findings.length}, qflow ${q.findings.length}${b.added ? `, ${b.added} refs completed` : ''})`);
      if (b.error) console.log(`  bpmnlint ${b.error}`);
      for (const f of bOnly) console.log(`  only bpmnlint: ${f.rule} ${f.element} ${f.severity}  (${f.message})`);
      for (const f of qOnly) console.log(`  only qflow:    ${f.rule} ${f.element} ${f.severity}  (${f.code}, line ${f.line})`);
      if (!opts.quiet) {
        for (const w of b.importWarnings) console.log(`  note: bpmnlint import warning ${w}`);
        for (const c of q.ownCodes) console.log(`  note: qflow ${c}`);
      }
    }
    if (opts.sarif) {
      const s = sarifFindings(file);
      const j = q.findings.map((f) => ({ ...f }));
      const sKey = (f) => `${f.rule} ${f.element} ${f.severity}`;
      const js = j.map(sKey).sort().join('\n');
      const ss = s.filter((f) => f.rule && !/^QF0/.test(f.code)).map(sKey).sort().join('\n');
      if (js !== ss) {
        sarifMismatches++;
        console.log(`  SARIF differs from JSON for ${rel}:\n    json:  ${js.split('\n').join('\n           ')}\n    sarif: ${ss.split('\n').join('\n           ')}`);
      }
    }
    if (opts.record) {
      const name = path.basename(file).replace(/\.bpmn$/, '.json');
      fs.mkdirSync(opts.record, { recursive: true });
      const rows = b.findings
        .map((f) => [f.rule, f.element, f.severity])
        .sort((x, y) => x.join(' ').localeCompare(y.join(' ')));
      const body = {
        bpmnlint: bpmnlintVersion,
        config: config,
        completeRefs: opts.completeRefs,
        findings: rows,
      };
      fs.writeFileSync(path.join(opts.record, name), JSON.stringify(body, null, 1).replace(/\[\n\s+("[^"]*"),\n\s+("[^"]*"),\n\s+("[^"]*")\n\s+\]/g, '[$1, $2, $3]') + '\n');
    }
  }
  console.log(`\n${files.length} models compared with bpmnlint ${bpmnlintVersion} (config ${configPath}${opts.completeRefs ? ', refs completed' : ''}): ${files.length - disagreeing} agree, ${disagreeing} disagree`);
  if (tally.size) {
    console.log('disagreements by rule (findings only bpmnlint / only qflow):');
    for (const [rule, t] of [...tally.entries()].sort()) {
      console.log(`  ${rule.padEnd(38)} ${String(t.bpmnlintOnly).padStart(4)} / ${String(t.qflowOnly).padStart(4)}`);
    }
  }
  if (opts.sarif) console.log(`SARIF against JSON: ${sarifMismatches} models differ`);
  process.exit(disagreeing || sarifMismatches ? 1 : 0);
})().catch((e) => {
  console.error(e.stack || String(e));
  process.exit(2);
});

// Judge one scenario's results against the baseline: every check the baseline expects to pass is
// SUCCESS, every FAILURE is one the baseline names (with its reason), and probectl's own JSON
// (the client's stdout) records an ok check, auth required when the scenario needs it, within
// the budget of 8 requests. The framework's --expected-failures takes whole scenarios only,
// which would hide a broken discovery; this reads checks.json instead.
// Usage: node judge.js baseline.json scenario results-dir
'use strict';
const fs = require('fs');
const path = require('path');

const [baselineFile, scenario, dir] = process.argv.slice(2);
const baseline = JSON.parse(fs.readFileSync(baselineFile, 'utf8'));
const want = baseline.scenarios[scenario];
if (!want) {
  console.error(`${scenario}: not in the baseline`);
  process.exit(2);
}
const checks = JSON.parse(fs.readFileSync(path.join(dir, 'checks.json'), 'utf8'));
const problems = [];
const status = {};
for (const c of checks) {
  if (c.status === 'SUCCESS' || c.status === 'FAILURE' || c.status === 'WARNING') {
    status[c.id] = c.status;
  }
}
for (const id of want.pass) {
  if (status[id] !== 'SUCCESS') {
    problems.push(`${id}: ${status[id] || 'missing'}, want SUCCESS`);
  }
}
for (const [id, s] of Object.entries(status)) {
  if (s === 'FAILURE' && !want.fail.includes(id)) {
    problems.push(`${id}: FAILURE, not in the baseline`);
  }
  if (s === 'WARNING') {
    problems.push(`${id}: WARNING`);
  }
}
for (const id of want.fail) {
  if (!baseline.why_failures[id]) {
    problems.push(`${id}: an expected failure without a reason in the baseline`);
  }
}

let result;
try {
  result = JSON.parse(fs.readFileSync(path.join(dir, 'stdout.txt'), 'utf8'));
} catch (e) {
  problems.push(`probectl's output is not its JSON result: ${e.message}`);
}
if (result) {
  if (result.outcome !== 'ok') problems.push(`probectl recorded ${result.outcome}: ${result.error || result.summary}`);
  if (want.auth_required && result.auth !== 'required') problems.push(`probectl did not record auth required`);
  if (!want.auth_required && result.auth) problems.push(`probectl recorded auth ${result.auth}`);
  if (!Array.isArray(result.requests) || result.requests.length > 8) problems.push(`probectl made ${result.requests && result.requests.length} requests, over the budget of 8`);
}

const passed = want.pass.filter((id) => status[id] === 'SUCCESS');
const line = `${scenario}: pass ${passed.join(', ') || '-'}; expected failures ${want.fail.join(', ') || '-'}; ` +
  (result ? `probectl: ${result.outcome}${result.auth ? ', auth ' + result.auth : ''}, ${result.requests.length} requests` : '');
if (problems.length) {
  console.log(`FAIL ${line}`);
  for (const p of problems) console.log(`  ${p}`);
  process.exit(1);
}
console.log(`ok   ${line}`);

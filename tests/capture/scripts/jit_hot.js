// A hot JavaScript function for recordings of JIT code (issue 39): leafHot does the work,
// callerHot calls it; runs for argv[2] seconds (default 2).
'use strict';
function leafHot(n) {
  let s = 0;
  for (let i = 0; i < n; i++) s += Math.sqrt(i) * 1.0001;
  return s;
}
function callerHot(n) {
  return leafHot(n) + 1;
}
const end = Date.now() + Number(process.argv[2] || 2) * 1000;
let total = 0;
while (Date.now() < end) total += callerHot(200000);
console.log(total > 0 ? 'done' : 'never');

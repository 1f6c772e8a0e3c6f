// Preloaded with NODE_OPTIONS=--require (where --cpu-prof is not allowed): profiles the process
// from start to exit and writes CPU_PROFILE_DIR/<pid>.cpuprofile. Used by bench/profile.ts only.
const { Session } = require('node:inspector');
const { writeFileSync } = require('node:fs');
const path = require('node:path');

const session = new Session();
session.connect();
session.post('Profiler.enable');
session.post('Profiler.setSamplingInterval', { interval: 500 });
session.post('Profiler.start');
process.on('exit', () => {
  // A session on the same thread answers synchronously, so this completes before the exit.
  session.post('Profiler.stop', (error, result) => {
    if (!error) writeFileSync(path.join(process.env.CPU_PROFILE_DIR, `${Date.now()}-${process.pid}.cpuprofile`), JSON.stringify(result.profile));
  });
});

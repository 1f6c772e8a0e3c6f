import { cleanUpServices } from './process';

// A Jest setup file (setupFilesAfterEnv): after each test file's last test, the processes it
// started are stopped and their queues' keys removed. Jest runs this hook before the file's own
// afterAll hooks (in the order declared), which then find those processes already stopped.
afterAll(() => cleanUpServices(), 30_000);

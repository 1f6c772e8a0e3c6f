import rootPackage from '../../../package.json';

/** The User-Agent of every outbound request: `Herald/<version of the root package.json>`. */
export const HERALD_USER_AGENT = `Herald/${rootPackage.version}`;

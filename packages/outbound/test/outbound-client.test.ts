import { createOutboundClient } from '../src';
import { describeOutboundClientContract } from './outbound-client-contract';

describeOutboundClientContract("Node's http client (callbacks)", (guard) => createOutboundClient({ guard }));
describeOutboundClientContract('axios (OAuth token requests)', (guard) => createOutboundClient({ guard, transport: 'axios' }));

import { createPortalLinkSchema } from '../portal/schemas';
import { adminOperation, BAD_BODY, json, problem, schemaRef, UNAUTHORIZED, withoutId, type Schema } from './document-parts';

/** The admin API's portal-link paths, for a merchant's and a program's portal. */
export function portalLinkPaths(): Record<string, unknown> {
  const paths: Record<string, unknown> = {};
  for (const owner of ['programs', 'merchants'] as const) {
    const idName = owner === 'programs' ? 'programId' : 'merchantId';
    const whose = owner === 'programs' ? 'Program' : 'Merchant';
    paths[`/admin/${owner}/{${idName}}/portal-links`] = {
      parameters: [{ name: idName, in: 'path', required: true, schema: { type: 'string' } }],
      post: adminOperation({
        operationId: `create${whose}PortalLink`,
        summary: `A single-use link that opens the merchant portal for this ${whose.toLowerCase()} (docs/portal.md); shown this once only.`,
        requestBody: { required: false, content: json(schemaRef('CreatePortalLink')) },
        responses: {
          201: { description: 'The link and when it stops working.', content: json(schemaRef('PortalLink')) },
          400: BAD_BODY,
          ...UNAUTHORIZED,
          404: problem(`No such ${whose.toLowerCase()}.`),
        },
      }),
    };
  }
  return paths;
}

/** The schemas of the portal-link paths. */
export const portalLinkSchemas: Record<string, Schema> = {
  CreatePortalLink: withoutId(createPortalLinkSchema as unknown as Schema),
  PortalLink: {
    type: 'object',
    additionalProperties: false,
    required: ['url', 'expiresAt'],
    properties: {
      url: { type: 'string', format: 'uri', description: 'Opens the portal once: hand it to the merchant, over a channel only it reads.' },
      expiresAt: { type: 'string', format: 'date-time', description: 'After this, the link opens nothing.' },
    },
  },
};

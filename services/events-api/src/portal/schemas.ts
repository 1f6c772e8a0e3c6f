import { DELIVERY_STATUSES, type DeliveryStatus } from '@herald/db';
import { eventSchema } from '@herald/domain';
import { pagingParameters } from '../http/query';

/** Query of the portal's deliveries page. Unknown parameters are refused, as the merchant API's are. */
export const portalDeliveriesQuerySchema = {
  $id: 'herald:portal/deliveries-query',
  type: 'object',
  additionalProperties: false,
  properties: {
    status: { type: 'string', enum: DELIVERY_STATUSES, description: 'pending, succeeded or failed.' },
    eventId: { ...eventSchema.properties.id, description: 'Deliveries of this event.' },
    page: pagingParameters.page,
  },
} as const;

export type PortalDeliveriesQuery = { status?: DeliveryStatus; eventId?: string; page?: number };

/** Query of the portal's events page. */
export const portalEventsQuerySchema = {
  $id: 'herald:portal/events-query',
  type: 'object',
  additionalProperties: false,
  properties: { page: pagingParameters.page },
} as const;

export type PortalEventsQuery = { page?: number };

/** Body of POST /admin/{merchants|programs}/{id}/portal-links; optional as a whole. */
export const createPortalLinkSchema = {
  $id: 'herald:admin/create-portal-link',
  type: 'object',
  additionalProperties: false,
  properties: {
    expiresInSeconds: {
      type: 'integer',
      minimum: 60,
      description: 'How long the link may be opened, in seconds: 60 to PORTAL_LINK_TTL_SECONDS (default 900), which is also the default.',
    },
  },
} as const;

export type CreatePortalLinkBody = { expiresInSeconds?: number };

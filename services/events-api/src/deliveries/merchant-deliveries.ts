import { targetOwnerKey, type DeliveryFilter, type DeliveryHistoryRepository, type TargetOwner } from '@herald/db';
import { merchantDeliveryDetailView, merchantDeliveryView } from './views';

// The merchant's own deliveries, read for GET /deliveries and for the portal alike: always
// through the owner's target, so that neither can show a delivery of another tenant.

/** One page of the callbacks to `owner`'s target, newest first, as the merchant sees them. */
export async function listOwnDeliveries(
  history: Pick<DeliveryHistoryRepository, 'listSummaries'>,
  owner: TargetOwner,
  query: { filter: DeliveryFilter; page: number; pageSize: number },
) {
  const filter = { ...query.filter, targetOwnerKey: targetOwnerKey(owner) };
  const { count, deliveries } = await history.listSummaries({ filter, page: query.page, pageSize: query.pageSize });
  return { count, deliveries: deliveries.map(merchantDeliveryView) };
}

/** One callback to `owner`'s target with every attempt; null for any other id, another tenant's included. */
export async function findOwnDelivery(history: Pick<DeliveryHistoryRepository, 'findSummary'>, owner: TargetOwner, id: string) {
  const detail = await history.findSummary(id, { targetOwnerKey: targetOwnerKey(owner) });
  return detail && merchantDeliveryDetailView(detail);
}

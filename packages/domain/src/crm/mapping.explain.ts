import type { CrmMapping, EventRecord, MappingRule, RuleOutcome } from '@ingest/schemas';
import { conditionHolds } from './mapping.plan.js';

/**
 * Why each rule of a mapping did or did not match an event, for the dry-run. The checks are the
 * planner's own (event name, then every condition, then the identity the rule's object is keyed
 * by), so `matched` is true exactly for the rules planSync turns into operations.
 */
export function explainRules(mapping: CrmMapping, event: EventRecord): RuleOutcome[] {
  return mapping.rules.map((rule) => {
    const reason = missReason(rule, event);
    return reason === undefined ? { ruleId: rule.id, matched: true } : { ruleId: rule.id, matched: false, reason };
  });
}

function missReason(rule: MappingRule, event: EventRecord): RuleOutcome['reason'] {
  const names = typeof rule.when.eventName === 'string' ? [rule.when.eventName] : rule.when.eventName;
  if (!names.includes(event.eventName)) return 'event_name';
  if (!(rule.when.where ?? []).every((c) => conditionHolds(c, event.properties))) return 'condition';
  if ((rule.object === 'contact' ? event.email : event.domain) === null) return 'missing_identity';
  return undefined;
}

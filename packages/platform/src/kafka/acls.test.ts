import { describe, expect, it } from 'vitest';
import { aclBindings, KAFKA_ROLES, parseAclPrincipals, ROLE_GRANTS } from './acls.js';
import { TOPICS } from './topics.js';

describe('aclBindings', () => {
  it('grants ingest its writes by topic name and control.* by prefix, never a write to control.*', () => {
    const acls = aclBindings('ingest', 'User:ingest', 'p.');
    expect(acls).toContainEqual({ resourceType: 'topic', resourceName: 'p.events.raw', patternType: 'literal', principal: 'User:ingest', operation: 'WRITE' });
    expect(acls).toContainEqual({ resourceType: 'topic', resourceName: 'p.control.', patternType: 'prefixed', principal: 'User:ingest', operation: 'READ' });
    expect(acls).toContainEqual({
      resourceType: 'group',
      resourceName: 'control-plane.',
      patternType: 'prefixed',
      principal: 'User:ingest',
      operation: 'READ',
    });
    expect(acls.filter((a) => a.operation === 'WRITE' && a.resourceName.startsWith('p.control.'))).toEqual([]);
  });

  it('lets only the console write the control plane', () => {
    const writers = KAFKA_ROLES.filter((role) =>
      aclBindings(role, `User:${role}`, '').some((a) => a.operation === 'WRITE' && a.resourceName.startsWith('control.')),
    );
    expect(writers).toEqual(['console']);
  });

  it('lets only the console write the audit log, and only the processor (its copier) read it', () => {
    const grants = (op: 'READ' | 'WRITE') =>
      KAFKA_ROLES.filter((role) => aclBindings(role, `User:${role}`, '').some((a) => a.operation === op && a.resourceName === 'audit.log'));
    expect(grants('WRITE')).toEqual(['console']);
    expect(grants('READ')).toEqual(['processor']);
  });

  it('names only topics that exist', () => {
    const names = new Set(Object.values(TOPICS).map((t) => t.name));
    for (const role of KAFKA_ROLES) {
      for (const a of aclBindings(role, 'User:x', '')) {
        if (a.resourceType === 'topic' && a.patternType === 'literal') expect(names, `${role}: ${a.resourceName}`).toContain(a.resourceName);
      }
    }
    expect(ROLE_GRANTS['crm-sink'].read).not.toContain('controlApiKeys');
  });
});

describe('parseAclPrincipals', () => {
  it('reads role=principal pairs, a principal may hold several roles', () => {
    expect(parseAclPrincipals(' ingest=User:gw, console=User:gw ,,')).toEqual([
      { role: 'ingest', principal: 'User:gw' },
      { role: 'console', principal: 'User:gw' },
    ]);
    expect(parseAclPrincipals('')).toEqual([]);
  });

  it.each(['ingest', 'reader=User:x', 'ingest=ingest', 'ingest='])('refuses %j naming the variable', (value) => {
    expect(() => parseAclPrincipals(value)).toThrow(/^KAFKA_ACL_PRINCIPALS: /);
  });
});

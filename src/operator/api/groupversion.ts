// The OracleNode API's group, version and kind, as CloudNativePG's api/v1/groupversion_info.go: what the CRD
// (crd.ts), the resource type (resource.ts) and every client name the kind by.
export const GROUP = 'oracle-node.io';
export const VERSION = 'v1alpha1';
export const API_VERSION = `${GROUP}/${VERSION}`;
export const KIND = 'OracleNode';
export const PLURAL = 'oraclenodes';
export const SINGULAR = 'oraclenode';
export const SHORT_NAME = 'onode';

export * from './accounts';
export * from './addons';
export * from './oauth';
export * from './calls';
export * from './audit';

// The rule lives in core: the Web Push body reveals hidden characters exactly as the dashboard does.
export * from '../../../../packages/core/src/text/reveal';

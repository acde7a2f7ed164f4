// The globals 2.x pages and the viewer share (SwaggerUi, SwaggerClient, initOAuth, swaggerUiAuth,
// onOAuthComplete…): a page may have put anything under these names, so they are read as unknown.

/** A window's globals, as a table of unknowns. */
export function globalsOf(win: Window): Record<string, unknown> {
  return win as unknown as Record<string, unknown>;
}

/** An object or a function (2.x's SwaggerClient is a constructor that carries properties). */
export function isHolder(value: unknown): value is Record<string, unknown> {
  return (typeof value === 'object' && value !== null) || typeof value === 'function';
}

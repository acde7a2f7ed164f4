// Row types of this service's tables (kept in step with migrations.ts).
export interface UsersTables {}

// OneSky's project types (GET /1/project-types): the type a project is created with. The codes
// `ios`, `android`, `website` and their names are OneSky's documented examples; `game-unity`, an
// `…-others` code and the six `…-metadata` codes (app store descriptions) are those OneSky's API
// answered to a public client's tests. The remaining names are this service's.
import { HttpError } from '../../http/errors.js';

export interface ProjectType {
  code: string;
  name: string;
}

export const PROJECT_TYPES: readonly ProjectType[] = [
  { code: 'ios', name: 'iOS App' },
  { code: 'android', name: 'Android App' },
  { code: 'website', name: 'Website' },
  { code: 'game-unity', name: 'Unity Game' },
  { code: 'game-others', name: 'Other Game' },
  { code: 'app-others', name: 'Other App' },
  { code: 'itunes-metadata', name: 'App Store Description' },
  { code: 'android-market-metadata', name: 'Google Play Description' },
  { code: 'windows-phone-marketplace-metadata', name: 'Windows Phone Store Description' },
  { code: 'android-amazon-metadata', name: 'Amazon Appstore Description' },
  { code: 'android-samsung-metadata', name: 'Samsung Apps Description' },
  { code: 'facebook-app-center-metadata', name: 'Facebook App Center Description' },
];

const BY_CODE = new Map(PROJECT_TYPES.map((type) => [type.code, type]));

export function findProjectType(code: string | null): ProjectType | null {
  return code === null ? null : (BY_CODE.get(code) ?? null);
}

/** The type named by `parameter`, or a 400 naming it. */
export function requireProjectType(parameter: string, code: string): ProjectType {
  const type = BY_CODE.get(code.trim().toLowerCase());
  if (!type) {
    throw new HttpError(400, `${parameter}: unknown project type "${code.slice(0, 60)}" (see GET /1/project-types)`);
  }
  return type;
}

/** App store description projects: their strings are what GET …/translations/app-descriptions exports. */
export function isAppDescriptionType(code: string | null): boolean {
  return code !== null && code.endsWith('-metadata');
}

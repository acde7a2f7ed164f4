// The locales the service supports: a curated list of language-region codes, named from the
// CLDR data in Node's Intl.DisplayNames (English name, and the name in the language itself).
// Codes follow OneSky: `code` = language-region (ja-JP, zh-TW), `locale` = language, `region`.
import { HttpError } from '../../http/errors.js';

const CODES = `
af-ZA am-ET ar-AE ar-BH ar-DZ ar-EG ar-IQ ar-JO ar-KW ar-LB ar-LY ar-MA ar-OM ar-QA ar-SA ar-SY ar-TN ar-YE
as-IN az-AZ be-BY bg-BG bn-BD bn-IN bo-CN br-FR bs-BA ca-AD ca-ES ceb-PH cs-CZ cy-GB da-DK de-AT de-BE de-CH
de-DE de-LI de-LU dz-BT el-CY el-GR en-AU en-BZ en-CA en-GB en-GH en-HK en-IE en-IN en-JM en-KE en-MT en-MY
en-NG en-NZ en-PH en-PK en-SG en-TT en-US en-ZA en-ZW eo-001 es-AR es-BO es-CL es-CO es-CR es-CU es-DO es-EC
es-ES es-GT es-HN es-MX es-NI es-PA es-PE es-PR es-PY es-SV es-US es-UY es-VE et-EE eu-ES fa-AF fa-IR ff-SN
fi-FI fil-PH fo-FO fr-BE fr-CA fr-CH fr-CI fr-CM fr-FR fr-LU fr-MA fr-MC fr-SN fy-NL ga-IE gd-GB gl-ES gu-IN
ha-NG haw-US he-IL hi-IN hr-BA hr-HR hu-HU hy-AM id-ID ig-NG is-IS it-CH it-IT ja-JP jv-ID ka-GE kk-KZ
kl-GL km-KH kn-IN ko-KP ko-KR ku-TR ky-KG lb-LU lo-LA lt-LT lv-LV mg-MG mi-NZ mk-MK ml-IN mn-MN mr-IN ms-BN
ms-MY ms-SG mt-MT my-MM nb-NO ne-IN ne-NP nl-BE nl-NL nl-SR nn-NO om-ET or-IN pa-IN pa-PK pl-PL ps-AF pt-AO
pt-BR pt-MZ pt-PT qu-PE rm-CH ro-MD ro-RO ru-BY ru-KZ ru-RU ru-UA rw-RW sa-IN sd-PK se-NO si-LK sk-SK sl-SI
sn-ZW so-SO sq-AL sr-BA sr-ME sr-RS sv-FI sv-SE sw-KE sw-TZ ta-IN ta-LK ta-SG te-IN tg-TJ th-TH ti-ER ti-ET
tk-TM tn-ZA to-TO tr-CY tr-TR tt-RU ug-CN uk-UA ur-IN ur-PK uz-UZ vi-VN wo-SN xh-ZA yi-001 yo-NG zh-CN
zh-HK zh-MO zh-SG zh-TW zu-ZA
`
  .trim()
  .split(/\s+/);

export interface Language {
  code: string;
  english_name: string;
  local_name: string;
  locale: string;
  region: string;
}

const english = new Intl.DisplayNames(['en'], { type: 'language', languageDisplay: 'standard' });

function describe(code: string): Language {
  const [locale, region] = code.split('-');
  let local: string;
  try {
    local = new Intl.DisplayNames([code], { type: 'language', languageDisplay: 'standard' }).of(code) ?? code;
  } catch {
    local = english.of(code) ?? code;
  }
  return { code, english_name: english.of(code) ?? code, local_name: local, locale, region };
}

export const LANGUAGES: Language[] = CODES.map(describe);
const BY_CODE = new Map(LANGUAGES.map((language) => [language.code.toLowerCase(), language]));

/**
 * The supported language for a code written ja-JP, ja_JP, JA-jp, or as a bare language (ja)
 * or script form (zh-Hant) that CLDR's likely-subtags data maximizes to one (ja-JP, zh-TW).
 */
export function findLanguage(input: string): Language | undefined {
  const text = input.trim().replace(/_/g, '-');
  const direct = BY_CODE.get(text.toLowerCase());
  if (direct) return direct;
  try {
    const maximal = new Intl.Locale(text).maximize();
    return BY_CODE.get(`${maximal.language}-${maximal.region}`.toLowerCase());
  } catch {
    return undefined;
  }
}

/** Like findLanguage, but a 400 naming the parameter when the code is unknown. */
export function requireLanguage(parameter: string, input: string): Language {
  const language = findLanguage(input);
  if (!language) throw new HttpError(400, `${parameter}: unknown locale "${input.slice(0, 40)}" (see GET /1/locales)`);
  return language;
}

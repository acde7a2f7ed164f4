// lang/translator.js: the translator alone, for pages that load language files before (or
// without) viewer.js. A translator already on the page is kept.
import { installTranslator } from './i18n.js';

installTranslator();

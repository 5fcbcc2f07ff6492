/** Issue 15 on the public sample events (../shared/corpora), the largest first, padded as the fixtures are. */
import { validLogEvents } from '../../../test/support/corpus.js';
import { largePageCases } from './large-page.cases.js';

largePageCases('public sample', validLogEvents);

/** Issue 15 on the repository's own fixtures (test/fixtures), padded to the size real pages reach. */
import { validLogEvents } from '../../../test/fixtures/index.js';
import { largePageCases } from './large-page.cases.js';

largePageCases('fixture', validLogEvents);

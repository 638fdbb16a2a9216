#!/usr/bin/env node
// The package's command. A file of its own, present before the build, so that npm links the
// command when it installs the package (in this repository, before `npm run build` made dist/).
import '../dist/cli.js';

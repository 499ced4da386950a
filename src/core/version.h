/*
 * The release version and the git commit a binary was built from, for
 * --version and for every artifact's provenance. The commit is read at build
 * time (not configure time), with "-dirty" when tracked files had changes.
 */
#ifndef TASO_VERSION_H
#define TASO_VERSION_H

const char *taso_version(void);
const char *taso_git_commit(void);

#endif

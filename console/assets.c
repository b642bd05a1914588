/*
 * Static assets built into the binary (console/assets/, embedded at build
 * time by cmake/embed_assets.cmake), served by path (GET/HEAD) with their
 * content type; "/" is the dashboard's page. Nothing is fetched from
 * elsewhere at run time.
 */
#include "console.h"

#include <string.h>

const cb__asset *cb__asset_find(const char *path)
{
	if (strcmp(path, "/") == 0)
		path = "/index.html";
	for (size_t i = 0; i < cb__assets_count; i++)
		if (strcmp(cb__assets[i].path, path) == 0)
			return &cb__assets[i];
	return NULL;
}

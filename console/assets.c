/*
 * Static assets built into the binary, served by path (GET/HEAD) with their
 * content type. The dashboard's HTML, scripts and styles are added here as
 * they are written; nothing is fetched from elsewhere at run time.
 */
#include "console.h"

#include <string.h>

static const unsigned char robots_txt[] = "User-agent: *\nDisallow: /\n";

static const cb__asset assets[] = {
	{ "/robots.txt", "text/plain; charset=utf-8", robots_txt, sizeof(robots_txt) - 1 },
};

const cb__asset *cb__asset_find(const char *path)
{
	for (size_t i = 0; i < sizeof(assets) / sizeof(assets[0]); i++)
		if (strcmp(assets[i].path, path) == 0)
			return &assets[i];
	return NULL;
}

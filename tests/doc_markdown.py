"""What the documentation tests read from Markdown pages: fenced blocks, inline code, links and
headings (with GitHub's anchors), each with its line number. Python 3 standard library only."""
import os
import re

FENCE = re.compile(r"^(\s*)(```+|~~~+)\s*([\w+-]*)")
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REF_DEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+\"[^\"]*\")?\s*$")
HTML_LINK = re.compile(r"<(?:a|img)\b[^>]*?\b(?:href|src)=\"([^\"]+)\"")
INLINE_CODE = re.compile(r"(`+)(.+?)\1")


class Page:
    """One Markdown file, split into fenced blocks and the prose around them."""

    def __init__(self, path, root):
        self.path = path
        self.rel = os.path.relpath(path, root)
        with open(path, encoding="utf-8") as f:
            self.lines = f.read().splitlines()
        self.blocks = []  # (language, first line number of the content, text)
        self.prose = []   # (line number, text) of every line outside fenced blocks
        fence = None
        for number, line in enumerate(self.lines, 1):
            match = FENCE.match(line)
            if fence is None and match:
                fence = (match.group(2), match.group(3).lower(), number + 1, [])
            elif fence is not None and line.strip().startswith(fence[0]) and \
                    line.strip().strip(fence[0][0]) == "":
                self.blocks.append((fence[1], fence[2], "\n".join(fence[3])))
                fence = None
            elif fence is not None:
                fence[3].append(line)
            else:
                self.prose.append((number, line))
        if fence is not None:
            self.blocks.append((fence[1], fence[2], "\n".join(fence[3])))

    def inline_code(self):
        """(line number, text) of every `code` span in the prose."""
        for number, line in self.prose:
            for match in INLINE_CODE.finditer(line):
                yield number, match.group(2).strip()

    def prose_without_code(self):
        """(line number, text) of the prose lines with their code spans blanked."""
        for number, line in self.prose:
            yield number, INLINE_CODE.sub(lambda m: " " * len(m.group(0)), line)

    def links(self):
        """(line number, target) of every link and image outside code."""
        for number, line in self.prose_without_code():
            for pattern in (LINK, HTML_LINK):
                for match in pattern.finditer(line):
                    yield number, match.group(1)
            match = REF_DEF.match(line)
            if match:
                yield number, match.group(1)

    def headings(self):
        """(line number, level, text) of the ATX headings ('#' lines) outside fenced blocks."""
        for number, line in self.prose:
            match = re.match(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$", line)
            if match:
                yield number, len(match.group(1)), match.group(2)

    def anchors(self):
        """The anchors GitHub gives the headings (a repeated one gets -1, -2, ...)."""
        seen = {}
        result = set()
        for _, _, text in self.headings():
            slug = slugify(text)
            count = seen.get(slug, 0)
            seen[slug] = count + 1
            result.add(slug if count == 0 else "%s-%d" % (slug, count))
        return result


def slugify(heading):
    """GitHub's anchor of a heading: lower case, markup and punctuation dropped (but - and _),
    spaces made hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # links keep their text
    text = re.sub(r"<[^>]+>", "", text).lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def markdown_files(root):
    """README.md, CHANGELOG.md and every .md under docs/, sorted."""
    paths = [os.path.join(root, name) for name in ("README.md", "CHANGELOG.md")
             if os.path.exists(os.path.join(root, name))]
    for folder, dirs, files in os.walk(os.path.join(root, "docs")):
        dirs.sort()
        paths += [os.path.join(folder, f) for f in sorted(files) if f.endswith(".md")]
    return paths

"""Reading a saved report in tests: its tags and the text of each <script>."""

from html.parser import HTMLParser


class ReportParts(HTMLParser):
    """Every start tag, in order, and the text of each <script> element by id."""

    def __init__(self):
        super().__init__()
        self.tags: list[str] = []
        self.scripts: dict[str, str] = {}
        self._in = None

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        if tag == "script":
            self._in = dict(attrs).get("id", "module")
            self.scripts[self._in] = ""

    def handle_endtag(self, tag):
        if tag == "script":
            self._in = None

    def handle_data(self, data):
        if self._in:
            self.scripts[self._in] += data

"""The look the project's HTML pages share (the Benchmarks pages and each run's report): one small
style sheet, light or dark as the Airflow UI around them is. Airflow 3's UI marks its theme with a
``dark`` class on its ``<html>`` (next-themes); the pages sit in same-origin iframes inside it, so
each reads the class from the top window, and follows it when the user switches. A page opened
alone follows the browser's own preference."""

from __future__ import annotations

_COLORS = (
    "body{font-family:sans-serif;background:#fff;color:#1a1a1a}"
    "table{border-collapse:collapse;font-size:12px}td,th{border:1px solid #ccc;padding:2px 6px}"
    ".bad{color:#b00;font-weight:bold}.ok{color:#070}.pending{color:#666}"
    "html.dark body{background:#1b1b1f;color:#ddd}html.dark td,html.dark th{border-color:#555}"
    "html.dark a{color:#8ab4f8}html.dark .bad{color:#ff7b72}html.dark .ok{color:#7ee787}"
    "html.dark .pending{color:#aaa}html.dark img{background:#fff}"  # the charts are drawn on white
    "html.dark iframe{border-color:#555}html.dark select,html.dark button,html.dark input"
    "{background:#2a2a30;color:#ddd;border:1px solid #555}"
)

# the top window's theme where it is Airflow's UI (same origin), else the browser's preference;
# a MutationObserver follows a switch made while the page is open
_SCRIPT = (
    "(function(){var d=document.documentElement,t=null;"
    "try{if(window.top!==window){t=window.top.document.documentElement}}catch(e){}"
    "function apply(){var dark=t?t.classList.contains('dark'):"
    "window.matchMedia('(prefers-color-scheme: dark)').matches;"
    "d.classList.toggle('dark',dark);d.style.colorScheme=dark?'dark':'light'}"
    "apply();if(t){new MutationObserver(apply).observe(t,{attributes:true,attributeFilter:['class']})}})()"
)


def page_head(extra_css: str = "") -> str:
    """The ``<style>`` and ``<script>`` every page of ours starts with (``extra_css``: the page's own
    layout rules)."""
    return f"<style>{_COLORS}{extra_css}</style><script>{_SCRIPT}</script>"

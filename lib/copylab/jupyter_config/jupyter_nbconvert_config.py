# nbconvert's settings wherever this folder is on JUPYTER_CONFIG_PATH (`make lab` puts it first, so
# File > Save and Export As > HTML and `jupyter nbconvert --to html` in its terminals use them): HTML
# that works offline, with the explorer as the figure it last showed (templates/copylab_offline).
from pathlib import Path

c = get_config()  # noqa: F821 (provided by Jupyter's config loader)
c.TemplateExporter.extra_template_basedirs = [str(Path(__file__).resolve().parent.parent / "templates")]
c.HTMLExporter.template_name = "copylab_offline"
c.SlidesExporter.template_name = "reveal"  # a subclass of HTMLExporter: slides stay slides

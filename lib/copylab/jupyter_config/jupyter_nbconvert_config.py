# copylab's nbconvert settings. Found without any environment variable: the Makefile puts a
# loader for this file into the environment's etc/jupyter/ (env/jupyter_nbconvert_config.py, on
# Jupyter's config path of every jupyter command of that environment); `make lab` also puts this
# folder first on JUPYTER_CONFIG_PATH, and its server reads them through jupyter_server_config.py.
# - HTML that works offline, with the explorer as the figure it last showed (templates/copylab_offline):
#   `jupyter nbconvert --to html`, File > Save and Export As > HTML. WebPDF is HTML printed: the same
#   template (HTMLExporter's settings reach its subclasses; slides keep their own).
# - `--to webpdf` with the Chromium this host has, printed once its figures are drawn (copylab.webpdf).
from pathlib import Path

from copylab import webpdf

c = get_config()  # noqa: F821 (provided by Jupyter's config loader)
c.TemplateExporter.extra_template_basedirs = [str(Path(__file__).resolve().parent.parent / "templates")]
c.HTMLExporter.template_name = "copylab_offline"
c.SlidesExporter.template_name = "reveal"  # a subclass of HTMLExporter: slides stay slides
webpdf.install()

"""One module per figure of the registry (:data:`aimlib.figures.registry.FIGURES`), each with its
drawing function of the same name, ``figN(inputs, *, axes=None, style=None)``, registered in
:data:`aimlib.figures.style.DRAW` by :func:`aimlib.figures.style.styled`.  They load matplotlib;
:mod:`aimlib.figures` imports one only when its figure is drawn or named."""

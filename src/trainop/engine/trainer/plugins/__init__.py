"""The TrainJob plugins (spec §3): one module per upstream plugin, run by ``registry``."""

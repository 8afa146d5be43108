"""`aqbench campaign`: many models qualified side by side on a cluster, one task per model; the driver
journals what the tasks stream back (driver), folds it into the campaign report (fold, report, timeline)
and shows progress (progress). The cluster itself is a port (ports) that adapters/ray implements."""

from orchestrator.campaign.driver import CampaignOptions, StopRequest, final_models, run_campaign
from orchestrator.campaign.fold import CampaignReport, fold_campaign
from orchestrator.campaign.ports import AttemptSpec, Cluster, Delivery, ModelRunner, StopNotice
from orchestrator.campaign.report import write_campaign_reports

__all__ = ["CampaignOptions", "StopRequest", "run_campaign", "final_models", "CampaignReport", "fold_campaign",
           "write_campaign_reports", "AttemptSpec", "Cluster", "Delivery", "ModelRunner", "StopNotice"]

"""GPU time and money: usage rolled up from process samples, costs by person, project and model, forecasts."""

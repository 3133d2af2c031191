"""/accounts/: sign up, log in, log out (POST), change password, one's own account."""

from django.urls import path

from accounts import views

app_name = "accounts"
urlpatterns = [
    path("signup/", views.signup, name="signup"),
    path("login/", views.login, name="login"),
    path("logout/", views.logout, name="logout"),
    path("password/", views.password_change, name="password_change"),
    path("me/", views.profile, name="profile"),
]
